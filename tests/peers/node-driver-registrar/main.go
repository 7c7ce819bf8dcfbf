// A stand-in for kubernetes-csi/node-driver-registrar, which the Go module proxy refuses (the
// whole module): it registers the CSI node plugin with the kubelet through the plugin
// registration socket, as the real one does, with the flags the chart passes to the real one.
//
// It asks the plugin its name (GetPluginInfo on --csi-address), serves the kubelet's
// Registration service on <--plugin-registration-path>/<name>-reg.sock (the kubelet watches
// /var/lib/kubelet/plugins_registry, mounted there), answering GetInfo with type CSIPlugin,
// the plugin's name and --kubelet-registration-path (the plugin socket's path on the host),
// and exits non-zero when the kubelet reports the registration failed (so the container
// restarts, as the real one does). --http-endpoint serves /healthz: 200 while the
// registration socket exists and the kubelet has not reported a failure.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var (
	csiAddress       = flag.String("csi-address", "/run/csi/socket", "Path of the CSI plugin's socket in this container.")
	kubeletRegPath   = flag.String("kubelet-registration-path", "", "Path of the CSI plugin's socket on the host (what the kubelet dials).")
	pluginRegPath    = flag.String("plugin-registration-path", "/registration", "Directory of the kubelet's plugin registration sockets in this container.")
	httpEndpoint     = flag.String("http-endpoint", "", "host:port to serve /healthz on (empty: off).")
	healthPort       = flag.Int("health-port", 0, "Deprecated form of --http-endpoint=:PORT (0: off).")
	timeout          = flag.Duration("timeout", time.Second, "Timeout of each call to the CSI plugin.")
	connectTimeout   = flag.Duration("connection-timeout", 0, "Ignored (kept for the real one's flag set).")
	_                = flag.Int("v", 0, "Log verbosity (accepted for compatibility; this stand-in logs the same at every level).")
	_                = flag.Bool("enable-pprof", false, "Ignored (accepted for compatibility).")
	registered       atomic.Int32 // 0 unknown, 1 registered, -1 refused
	registrationSock string
)

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name string
}

func (r registrar) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("kubelet asked for the plugin info: %s at %s", r.name, *kubeletRegPath)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.name,
		Endpoint:          *kubeletRegPath,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r registrar) NotifyRegistrationStatus(ctx context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		registered.Store(-1)
		log.Printf("the kubelet refused the registration: %s; exiting so the container restarts", s.Error)
		os.Remove(registrationSock)
		os.Exit(1)
	}
	registered.Store(1)
	log.Printf("registered with the kubelet")
	return &registerapi.RegistrationStatusResponse{}, nil
}

// driverName asks the plugin its name, retrying until it answers (it may start after us).
func driverName() string {
	conn, err := grpc.NewClient("unix://"+*csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("bad --csi-address %q: %v", *csiAddress, err)
	}
	defer conn.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		resp, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil && resp.GetName() != "" {
			return resp.GetName()
		}
		log.Printf("waiting for the CSI plugin at %s: %v", *csiAddress, err)
		time.Sleep(time.Second)
	}
}

func serveHealth(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(registrationSock); err != nil {
			http.Error(w, fmt.Sprintf("registration socket: %v", err), http.StatusInternalServerError)
			return
		}
		if registered.Load() < 0 {
			http.Error(w, "the kubelet refused the registration", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	log.Fatal(http.ListenAndServe(addr, mux))
}

func main() {
	flag.Parse()
	_ = connectTimeout
	if *kubeletRegPath == "" {
		log.Fatal("--kubelet-registration-path is required")
	}
	name := driverName()
	registrationSock = filepath.Join(*pluginRegPath, name+"-reg.sock")
	// A socket left by a previous run would make Listen fail.
	if err := os.Remove(registrationSock); err != nil && !os.IsNotExist(err) {
		log.Fatalf("removing the old %s: %v", registrationSock, err)
	}
	lis, err := net.Listen("unix", registrationSock)
	if err != nil {
		log.Fatalf("listening on %s: %v", registrationSock, err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, registrar{name: name})
	if *httpEndpoint == "" && *healthPort > 0 {
		*httpEndpoint = fmt.Sprintf(":%d", *healthPort)
	}
	if *httpEndpoint != "" {
		go serveHealth(*httpEndpoint)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		// The kubelet deregisters the plugin when the socket goes.
		srv.Stop()
		os.Remove(registrationSock)
		os.Exit(0)
	}()
	log.Printf("serving the registration of %s on %s (plugin socket on the host: %s)", name, registrationSock, *kubeletRegPath)
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("serving: %v", err)
	}
}
