// CSI interop client on grpc-java (grpc-netty-shaded, epoll), with the channel's DEFAULT
// options: `Grpc.newChannelBuilder("unix://PATH", insecure)`, which sends the socket path as
// :authority.
//
// Calls every Identity RPC, then a volume lifecycle (create, controller publish, stage,
// publish, unpublish, unstage, controller unpublish, delete) against the driver. Any RPC
// error, or a result that is not what the spec asks for, ends the run with exit status 1.
// Messages are dynamic, from a descriptor set of the repository's proto/csi.proto, so no
// generated Java code (and no protoc plugin) is needed.
//
// Usage: java -cp CLASSPATH CsiClient.java DESCRIPTOR_SET SOCKET KUBELET_DIR NAME

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

public class CsiClient {
    static final String CLIENT = "grpc-java (" + io.grpc.internal.GrpcUtil.IMPLEMENTATION_VERSION + ")";
    static FileDescriptor csi;
    static ManagedChannel channel;

    static void fail(String msg) {
        System.err.println(CLIENT + ": FAIL: " + msg);
        System.exit(1);
    }

    static Descriptor type(String name) {
        Descriptor d = csi.findMessageTypeByName(name.split("\\.")[0]);
        for (String part : name.split("\\.")) {
            if (!part.equals(d.getName())) d = d.findNestedTypeByName(part);
        }
        if (d == null) fail("no message " + name + " in csi.proto");
        return d;
    }

    /** A message of TYPE with fields set by name: message, List (repeated), Map (map), or scalar. */
    static DynamicMessage msg(String typeName, Object... kv) {
        Descriptor t = type(typeName);
        DynamicMessage.Builder b = DynamicMessage.newBuilder(t);
        for (int i = 0; i < kv.length; i += 2) {
            FieldDescriptor f = t.findFieldByName((String) kv[i]);
            if (f == null) fail(typeName + " has no field " + kv[i]);
            Object v = kv[i + 1];
            if (f.isMapField()) {
                Descriptor entry = f.getMessageType();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    b.addRepeatedField(f, DynamicMessage.newBuilder(entry)
                            .setField(entry.findFieldByName("key"), e.getKey())
                            .setField(entry.findFieldByName("value"), e.getValue()).build());
                }
            } else if (v instanceof List) {
                for (Object o : (List<?>) v) b.addRepeatedField(f, o);
            } else if (f.getType() == FieldDescriptor.Type.ENUM) {
                b.setField(f, f.getEnumType().findValueByName((String) v));
            } else {
                b.setField(f, v);
            }
        }
        return b.build();
    }

    static Object get(DynamicMessage m, String field) {
        FieldDescriptor f = m.getDescriptorForType().findFieldByName(field);
        if (f == null) fail(m.getDescriptorForType().getName() + " has no field " + field);
        return m.getField(f);
    }

    static Map<String, String> map(DynamicMessage m, String field) {
        Map<String, String> out = new HashMap<>();
        for (Object o : (List<?>) get(m, field)) {
            DynamicMessage e = (DynamicMessage) o;
            out.put((String) get(e, "key"), (String) get(e, "value"));
        }
        return out;
    }

    static DynamicMessage call(String service, String method, DynamicMessage req) {
        String out = method + "Response";
        MethodDescriptor<DynamicMessage, DynamicMessage> md =
                MethodDescriptor.<DynamicMessage, DynamicMessage>newBuilder()
                        .setType(MethodDescriptor.MethodType.UNARY)
                        .setFullMethodName(MethodDescriptor.generateFullMethodName("csi.v1." + service, method))
                        .setRequestMarshaller(ProtoUtils.marshaller(DynamicMessage.getDefaultInstance(req.getDescriptorForType())))
                        .setResponseMarshaller(ProtoUtils.marshaller(DynamicMessage.getDefaultInstance(type(out))))
                        .build();
        try {
            DynamicMessage resp = ClientCalls.blockingUnaryCall(
                    channel, md, CallOptions.DEFAULT.withDeadlineAfter(120, TimeUnit.SECONDS), req);
            System.out.println(CLIENT + ": " + method + ": OK");
            return resp;
        } catch (StatusRuntimeException e) {
            fail(method + ": " + e.getStatus().getCode() + ": " + e.getStatus().getDescription());
            return null;
        }
    }

    static boolean isMountPoint(String path) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] f = line.split(" ");
            if (f.length > 4 && f[4].equals(path)) return true;
        }
        return false;
    }

    static FileDescriptor load(String descriptorSet) throws Exception {
        FileDescriptorSet set;
        try (FileInputStream in = new FileInputStream(descriptorSet)) {
            set = FileDescriptorSet.parseFrom(in);
        }
        // --include_imports lists dependencies before their dependents.
        Map<String, FileDescriptor> built = new HashMap<>();
        FileDescriptor last = null;
        for (FileDescriptorProto p : set.getFileList()) {
            List<FileDescriptor> deps = new ArrayList<>();
            for (String d : p.getDependencyList()) deps.add(built.get(d));
            last = FileDescriptor.buildFrom(p, deps.toArray(new FileDescriptor[0]));
            built.put(p.getName(), last);
        }
        return built.getOrDefault("csi.proto", last);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: CsiClient.java DESCRIPTOR_SET SOCKET KUBELET_DIR NAME");
            System.exit(2);
        }
        csi = load(args[0]);
        String sock = args[1], kubelet = args[2], name = args[3];
        // Default options: no overrideAuthority, so the socket path goes out as :authority.
        channel = Grpc.newChannelBuilder("unix://" + sock, InsecureChannelCredentials.create()).build();

        DynamicMessage info = call("Identity", "GetPluginInfo", msg("GetPluginInfoRequest"));
        if (((String) get(info, "name")).isEmpty() || ((String) get(info, "vendor_version")).isEmpty()) {
            fail("GetPluginInfo: empty name or vendor_version: " + info);
        }
        DynamicMessage caps = call("Identity", "GetPluginCapabilities", msg("GetPluginCapabilitiesRequest"));
        if (!caps.toString().contains("CONTROLLER_SERVICE")) {
            fail("GetPluginCapabilities: no CONTROLLER_SERVICE in " + caps);
        }
        call("Identity", "Probe", msg("ProbeRequest"));

        String nodeId = (String) get(call("Node", "NodeGetInfo", msg("NodeGetInfoRequest")), "node_id");
        if (nodeId.isEmpty()) fail("NodeGetInfo: empty node_id");
        DynamicMessage cap = msg("VolumeCapability",
                "mount", msg("VolumeCapability.MountVolume", "fs_type", "ext4"),
                "access_mode", msg("VolumeCapability.AccessMode", "mode", "SINGLE_NODE_WRITER"));
        DynamicMessage vol = (DynamicMessage) get(call("Controller", "CreateVolume", msg("CreateVolumeRequest",
                "name", name,
                "capacity_range", msg("CapacityRange", "required_bytes", 1L << 30),
                "volume_capabilities", List.of(cap))), "volume");
        String vid = (String) get(vol, "volume_id");
        if (vid.isEmpty() || (Long) get(vol, "capacity_bytes") < 1L << 30) fail("CreateVolume: bad volume " + vol);
        Map<String, String> volCtx = map(vol, "volume_context");
        Map<String, String> pubCtx = map(call("Controller", "ControllerPublishVolume", msg("ControllerPublishVolumeRequest",
                "volume_id", vid, "node_id", nodeId, "volume_capability", cap, "volume_context", volCtx)),
                "publish_context");
        String staging = kubelet + "/plugins/kubernetes.io/csi/interop/" + name + "/globalmount";
        String target = kubelet + "/pods/" + name + "/volumes/kubernetes.io~csi/pv/mount";
        Files.createDirectories(Path.of(staging));
        Files.createDirectories(Path.of(target).getParent());
        call("Node", "NodeStageVolume", msg("NodeStageVolumeRequest",
                "volume_id", vid, "publish_context", pubCtx, "staging_target_path", staging,
                "volume_capability", cap, "volume_context", volCtx));
        if (!isMountPoint(staging)) fail("NodeStageVolume: " + staging + " is not a mount point");
        call("Node", "NodePublishVolume", msg("NodePublishVolumeRequest",
                "volume_id", vid, "publish_context", pubCtx, "staging_target_path", staging,
                "target_path", target, "volume_capability", cap, "volume_context", volCtx));
        if (!isMountPoint(target)) fail("NodePublishVolume: " + target + " is not a mount point");
        Files.writeString(Path.of(target, "hello"), CLIENT);
        call("Node", "NodeUnpublishVolume", msg("NodeUnpublishVolumeRequest", "volume_id", vid, "target_path", target));
        if (isMountPoint(target)) fail("NodeUnpublishVolume: " + target + " is still a mount point");
        call("Node", "NodeUnstageVolume", msg("NodeUnstageVolumeRequest", "volume_id", vid, "staging_target_path", staging));
        if (isMountPoint(staging)) fail("NodeUnstageVolume: " + staging + " is still a mount point");
        call("Controller", "ControllerUnpublishVolume", msg("ControllerUnpublishVolumeRequest", "volume_id", vid, "node_id", nodeId));
        call("Controller", "DeleteVolume", msg("DeleteVolumeRequest", "volume_id", vid));
        channel.shutdown().awaitTermination(10, TimeUnit.SECONDS);
        System.out.println(CLIENT + ": all RPCs OK");
    }
}
