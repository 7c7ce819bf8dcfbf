// A stand-in for kubernetes-csi/livenessprobe, which the Go module proxy refuses (the whole
// module), with the flags the chart passes to the real one: /healthz on --http-endpoint (or
// --health-port) calls the CSI plugin's Probe on --csi-address and answers 200 "ok" when the
// plugin says it is ready, 500 with the reason otherwise (an error, a timeout after
// --probe-timeout, or ready=false), so the kubelet's liveness probe of the plugin container
// goes through the plugin itself, as with the real sidecar.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	csiAddress   = flag.String("csi-address", "/run/csi/socket", "Path of the CSI plugin's socket.")
	probeTimeout = flag.Duration("probe-timeout", time.Second, "Timeout of each Probe call.")
	healthPort   = flag.Int("health-port", 9808, "Port of /healthz (when --http-endpoint is empty).")
	httpEndpoint = flag.String("http-endpoint", "", "host:port of /healthz (overrides --health-port).")
	metricsPath  = flag.String("metrics-path", "/metrics", "Ignored (accepted for compatibility).")
	_            = flag.Int("v", 0, "Log verbosity (accepted for compatibility).")
	_            = flag.Duration("connection-timeout", 0, "Ignored (deprecated in the real one too).")
)

func main() {
	flag.Parse()
	_ = metricsPath
	conn, err := grpc.NewClient("unix://"+*csiAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("bad --csi-address %q: %v", *csiAddress, err)
	}
	defer conn.Close()
	ids := csi.NewIdentityClient(conn)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), *probeTimeout)
		defer cancel()
		resp, err := ids.Probe(ctx, &csi.ProbeRequest{})
		if err != nil {
			log.Printf("health check failed: Probe: %v", err)
			http.Error(w, fmt.Sprintf("Probe: %v", err), http.StatusInternalServerError)
			return
		}
		if r := resp.GetReady(); r != nil && !r.GetValue() {
			log.Printf("health check failed: the plugin is not ready")
			http.Error(w, "the plugin is not ready", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	addr := *httpEndpoint
	if addr == "" {
		addr = fmt.Sprintf(":%d", *healthPort)
	}
	log.Printf("serving /healthz on %s (Probe on %s)", addr, *csiAddress)
	log.Fatal(http.ListenAndServe(addr, nil))
}
