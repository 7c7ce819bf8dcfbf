{{- define "cinder-csi.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cinder-csi.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "cinder-csi.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "cinder-csi.labels" -}}
app.kubernetes.io/name: {{ include "cinder-csi.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "cinder-csi.selector" -}}
app.kubernetes.io/name: {{ include "cinder-csi.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cinder-csi.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "cinder-csi.commonArgs" -}}
- --endpoint=$(CSI_ENDPOINT)
- --cloud-config=$(CLOUD_CONFIG)
- --driver-name={{ .Values.driverName }}
- --with-topology={{ .Values.withTopology }}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
{{- end -}}

{{/* The cloud-config volume: a Secret (as a directory, never subPath: the kubelet updates
only those in place), or the node's /etc/config (upstream's hostMount). */}}
{{- define "cinder-csi.cloudConfigVolume" -}}
{{- if .Values.secret.enabled -}}
- name: cloud-config
  secret:
    secretName: {{ .Values.secret.name }}
{{- else if .Values.secret.hostMount -}}
- name: cloud-config
  hostPath:
    path: {{ .Values.secret.hostMountPath }}
    type: Directory
{{- end -}}
{{- end -}}

{{- define "cinder-csi.cloudConfigMount" -}}
{{- if or .Values.secret.enabled .Values.secret.hostMount -}}
- name: cloud-config
  mountPath: /etc/config
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
A cloud.conf value, double-quoted for the gcfg syntax the driver parses (src/config/ini.rs):
inside quotes `#` and `;` are literal, and `\`, `"`, newline and tab are escaped.
*/}}
{{- define "cinder-csi.iniValue" -}}
{{- $s := toString . -}}
{{- /* YAML numbers arrive as float64: print whole ones without an exponent (1e+06). */ -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- $s = printf "%d" (int64 .) -}}
{{- end -}}
"{{ $s | replace "\\" "\\\\" | replace "\"" "\\\"" | replace "\n" "\\n" | replace "\t" "\\t" }}"
{{- end -}}

{{/*
Values of upstream's openstack-cinder-csi chart that this chart spells differently: fail with
the key to use instead of silently ignoring them.
*/}}
{{- define "cinder-csi.rejectUpstreamKeys" -}}
{{- $v := .Values | toYaml | fromYaml -}}
{{- $renamed := list
  (list "csi.plugin.nodePlugin.kubeletDir" "node.kubeletDir")
  (list "csi.plugin.nodePlugin.dnsPolicy" "node.dnsPolicy")
  (list "csi.plugin.nodePlugin.nodeSelector" "node.nodeSelector")
  (list "csi.plugin.nodePlugin.tolerations" "node.tolerations")
  (list "csi.plugin.nodePlugin.affinity" "node.affinity")
  (list "csi.plugin.nodePlugin.hostAliases" "node.hostAliases")
  (list "csi.plugin.nodePlugin.podAnnotations" "node.podAnnotations")
  (list "csi.plugin.nodePlugin.podLabels" "node.podLabels")
  (list "csi.plugin.nodePlugin.podSecurityContext" "node.podSecurityContext")
  (list "csi.plugin.nodePlugin.extraArgs" "node.extraArgs")
  (list "csi.plugin.controllerPlugin.replicas" "controller.replicas")
  (list "csi.plugin.controllerPlugin.strategy" "controller.strategy")
  (list "csi.plugin.controllerPlugin.nodeSelector" "controller.nodeSelector")
  (list "csi.plugin.controllerPlugin.tolerations" "controller.tolerations")
  (list "csi.plugin.controllerPlugin.affinity" "controller.affinity")
  (list "csi.plugin.controllerPlugin.hostAliases" "controller.hostAliases")
  (list "csi.plugin.controllerPlugin.podAnnotations" "controller.podAnnotations")
  (list "csi.plugin.controllerPlugin.podLabels" "controller.podLabels")
  (list "csi.plugin.controllerPlugin.podSecurityContext" "controller.podSecurityContext")
  (list "csi.plugin.controllerPlugin.securityContext" "controller.securityContext")
  (list "csi.plugin.controllerPlugin.extraArgs" "controller.extraArgs")
  (list "csi.plugin.image" "image (repository, tag, pullPolicy)")
  (list "csi.plugin.resources" "controller.resources and node.resources")
  (list "csi.plugin.extraArgs" "controller.extraArgs and node.extraArgs")
  (list "csi.plugin.extraEnv" "controller.extraEnv and node.extraEnv")
  (list "csi.plugin.volumes" "controller.extraVolumes and node.extraVolumes")
  (list "csi.plugin.volumeMounts" "controller.extraVolumeMounts and node.extraVolumeMounts")
  (list "csi.plugin.httpEndpoint" "controller.metricsPort")
  (list "csi.attacher" "sidecars.attacher")
  (list "csi.provisioner" "sidecars.provisioner")
  (list "csi.snapshotter" "sidecars.snapshotter")
  (list "csi.resizer" "sidecars.resizer")
  (list "csi.livenessprobe" "sidecars.livenessProbe, controller.livenessProbe and node.livenessProbe")
  (list "csi.nodeDriverRegistrar" "sidecars.nodeDriverRegistrar")
  (list "logVerbosityLevel" "logLevel (info, debug, ...)")
  (list "extraLabels" "commonLabels")
  (list "priorityClassName" "controller.priorityClassName and node.priorityClassName")
-}}
{{- range $renamed -}}
{{- $path := splitList "." (index . 0) -}}
{{- $node := $v -}}
{{- range $path -}}
{{- if kindIs "map" $node -}}
{{- $node = get $node . -}}
{{- else -}}
{{- $node = "" -}}
{{- end -}}
{{- end -}}
{{- if not (empty $node) -}}
{{- fail (printf "values key %q is from upstream's openstack-cinder-csi chart; this chart's key is %s (docs/MIGRATING.md)" (index . 0) (index . 1)) -}}
{{- end -}}
{{- end -}}
{{- /* upstream's csi.plugin.podMonitor is taken as monitoring.podMonitor (cinder-csi.podMonitor) */ -}}
{{- $rest := deepCopy ($v.csi | default dict) -}}
{{- if kindIs "map" $rest.plugin -}}
{{- $_ := unset $rest.plugin "podMonitor" -}}
{{- if empty $rest.plugin }}{{ $_ := unset $rest "plugin" }}{{ end -}}
{{- end -}}
{{- if not (empty $rest) -}}
{{- fail (printf "values key \"csi\" is from upstream's openstack-cinder-csi chart; see docs/MIGRATING.md for this chart's keys (got csi: %s)" (toJson $rest)) -}}
{{- end -}}
{{- end -}}

{{/* The leader election flags every controller sidecar gets. */}}
{{- define "cinder-csi.leaderElectionArgs" -}}
- --leader-election=true
- --leader-election-namespace={{ .Release.Namespace }}
{{- with .Values.controller.leaderElection }}
- --leader-election-lease-duration={{ .leaseDuration }}
- --leader-election-renew-deadline={{ .renewDeadline }}
- --leader-election-retry-period={{ .retryPeriod }}
{{- end }}
{{- end -}}

{{/* A sidecar's env, envFrom and securityContext: (list $ .Values.sidecars.NAME). */}}
{{- define "cinder-csi.sidecarExtras" -}}
{{- $root := index . 0 -}}
{{- $sidecar := index . 1 -}}
{{- with $sidecar.extraEnv }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $sidecar.envFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.sidecars.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Pod annotations: a checksum of the Secret the chart renders, so that `helm upgrade` with new
secret.data restarts the pods (the controller would also take new credentials in place).
*/}}
{{- define "cinder-csi.secretChecksum" -}}
{{- if and .Values.secret.enabled .Values.secret.create -}}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum | trunc 16 }}
{{- end -}}
{{- end -}}

{{/* The PodMonitor/ServiceMonitor endpoint settings shared by both: (dict "m" VALUES "job" JOB). */}}
{{- define "cinder-csi.scrapeEndpoint" -}}
path: /metrics
scheme: http
interval: {{ .m.interval }}
scrapeTimeout: {{ .m.scrapeTimeout }}
relabelings:
  # The job the chart's alerts look for (monitoring.controllerJob / nodeJob).
  - action: replace
    targetLabel: job
    replacement: {{ .job }}
  {{- with .m.relabelings }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .m.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
monitoring.podMonitor, with upstream's csi.plugin.podMonitor {enabled, additionalLabels}
taken as it (enabled wins if either says so; the labels are merged).
*/}}
{{- define "cinder-csi.podMonitor" -}}
{{- $m := deepCopy .Values.monitoring.podMonitor -}}
{{- $up := dict -}}
{{- if and (kindIs "map" .Values.csi) (kindIs "map" .Values.csi.plugin) (kindIs "map" .Values.csi.plugin.podMonitor) -}}
{{- $up = .Values.csi.plugin.podMonitor -}}
{{- end -}}
{{- if $up.enabled }}{{ $_ := set $m "enabled" true }}{{ end -}}
{{- $_ := set $m "labels" (merge (deepCopy ($m.labels | default dict)) ($up.additionalLabels | default dict)) -}}
{{- toYaml $m -}}
{{- end -}}

{{/* Where the node plugin runs: node.namespace, else the release's. */}}
{{- define "cinder-csi.nodeNamespace" -}}
{{- .Values.node.namespace | default .Release.Namespace -}}
{{- end -}}
