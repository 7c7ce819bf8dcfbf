#!/usr/bin/env node
// CSI interop client on grpc-js (Node), with the channel's DEFAULT options.
//
// Calls every Identity RPC, then a volume lifecycle (create, controller publish, stage,
// publish, unpublish, unstage, controller unpublish, delete) against the driver on a Unix
// socket. Any RPC error, or a result that is not what the spec asks for, ends the run with
// exit status 1. The stubs are loaded from the repository's proto/csi.proto (proto-loader).
//
// Usage: node csi_client.js SOCKET KUBELET_DIR NAME   (NODE_PATH: where grpc-js is installed)
'use strict';
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const client = `grpc-js (${require('@grpc/grpc-js/package.json').version})`;

function fail(msg) {
  console.error(`${client}: FAIL: ${msg}`);
  process.exit(1);
}

function isMountPoint(p) {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .some((line) => line.split(' ')[4] === p);
}

async function main() {
  if (process.argv.length !== 5) {
    console.error('usage: csi_client.js SOCKET KUBELET_DIR NAME');
    process.exit(2);
  }
  const [sock, kubelet, name] = process.argv.slice(2);
  const def = protoLoader.loadSync('csi.proto', {
    includeDirs: [path.join(__dirname, '..', '..', '..', '..', 'proto')],
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const csi = grpc.loadPackageDefinition(def).csi.v1;
  // Default options: no grpc.default_authority override.
  const target = `unix:${sock}`;
  const creds = grpc.credentials.createInsecure();
  const ident = new csi.Identity(target, creds);
  const ctrl = new csi.Controller(target, creds);
  const node = new csi.Node(target, creds);

  const call = (stub, method, req) => new Promise((resolve) => {
    stub[method](req, { deadline: Date.now() + 120000 }, (err, resp) => {
      if (err) fail(`${method}: ${grpc.status[err.code]}: ${err.details}`);
      console.log(`${client}: ${method}: OK`);
      resolve(resp);
    });
  });

  const info = await call(ident, 'GetPluginInfo', {});
  if (!info.name || !info.vendor_version) fail(`GetPluginInfo: empty name or vendor_version: ${JSON.stringify(info)}`);
  const caps = await call(ident, 'GetPluginCapabilities', {});
  if (!caps.capabilities.some((c) => c.service && c.service.type === 'CONTROLLER_SERVICE')) {
    fail(`GetPluginCapabilities: no CONTROLLER_SERVICE in ${JSON.stringify(caps)}`);
  }
  await call(ident, 'Probe', {});

  const nodeId = (await call(node, 'NodeGetInfo', {})).node_id;
  if (!nodeId) fail('NodeGetInfo: empty node_id');
  const cap = { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };
  const vol = (await call(ctrl, 'CreateVolume', {
    name, capacity_range: { required_bytes: String(1 << 30) }, volume_capabilities: [cap],
  })).volume;
  if (!vol.volume_id || BigInt(vol.capacity_bytes) < 1n << 30n) fail(`CreateVolume: bad volume ${JSON.stringify(vol)}`);
  const vid = vol.volume_id;
  const pub = await call(ctrl, 'ControllerPublishVolume', {
    volume_id: vid, node_id: nodeId, volume_capability: cap, volume_context: vol.volume_context,
  });
  const staging = path.join(kubelet, 'plugins/kubernetes.io/csi/interop', name, 'globalmount');
  const tgt = path.join(kubelet, 'pods', name, 'volumes/kubernetes.io~csi/pv/mount');
  fs.mkdirSync(staging, { recursive: true });
  fs.mkdirSync(path.dirname(tgt), { recursive: true });
  await call(node, 'NodeStageVolume', {
    volume_id: vid, publish_context: pub.publish_context, staging_target_path: staging,
    volume_capability: cap, volume_context: vol.volume_context,
  });
  if (!isMountPoint(staging)) fail(`NodeStageVolume: ${staging} is not a mount point`);
  await call(node, 'NodePublishVolume', {
    volume_id: vid, publish_context: pub.publish_context, staging_target_path: staging,
    target_path: tgt, volume_capability: cap, volume_context: vol.volume_context,
  });
  if (!isMountPoint(tgt)) fail(`NodePublishVolume: ${tgt} is not a mount point`);
  fs.writeFileSync(path.join(tgt, 'hello'), client);
  await call(node, 'NodeUnpublishVolume', { volume_id: vid, target_path: tgt });
  if (isMountPoint(tgt)) fail(`NodeUnpublishVolume: ${tgt} is still a mount point`);
  await call(node, 'NodeUnstageVolume', { volume_id: vid, staging_target_path: staging });
  if (isMountPoint(staging)) fail(`NodeUnstageVolume: ${staging} is still a mount point`);
  await call(ctrl, 'ControllerUnpublishVolume', { volume_id: vid, node_id: nodeId });
  await call(ctrl, 'DeleteVolume', { volume_id: vid });
  for (const s of [ident, ctrl, node]) s.close();
  console.log(`${client}: all RPCs OK`);
}

main().catch((e) => fail(e.stack || String(e)));
