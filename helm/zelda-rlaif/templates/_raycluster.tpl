{{/* The RayCluster the trainer runs on: its pod templates and its spec. */}}

{{/* dict root group image resources shmSize rayStartParams replicas nodeSelector tolerations gpus:
     one pod template of the RayCluster (the head when group is "head"). */}}
{{- define "zelda.rayPodTemplate" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- include "zelda.componentLabels" (dict "root" $root "component" "trainer") | nindent 4 }}
    zelda-rlaif/ray-group: {{ .group }}
spec:
  {{- if and (eq .group "head") (include "zelda.rayAutoscaling" $root) }}
  # KubeRay runs the Ray autoscaler as a sidecar of the head: it reads pods and patches the RayCluster's
  # replicas through the API server, with the token of its own ServiceAccount (serviceaccount.yaml).
  serviceAccountName: {{ include "zelda.rayAutoscalerName" $root }}
  automountServiceAccountToken: true
  {{- else }}
  serviceAccountName: {{ include "zelda.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- end }}
  {{- with include "zelda.imagePullSecrets" $root }}
  {{- . | nindent 2 }}
  {{- end }}
  securityContext:
    {{- include "zelda.podSecurityContext" $root | nindent 4 }}
  {{- if eq .group "head" }}
  initContainers:
    {{- include "zelda.provisionInitContainer" (dict "root" $root "image" .image "writableRoot" true) | nindent 4 }}
  {{- end }}
  containers:
    - name: ray-{{ .group }}
      image: {{ .image }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      {{- if eq .group "head" }}
      ports:
        - {name: gcs, containerPort: 6379}
        - {name: dashboard, containerPort: 8265}
        - {name: client, containerPort: 10001}
      {{- end }}
      env:
        {{- include "zelda.trainerEnv" $root | nindent 8 }}
      resources:
        {{- $resources := deepCopy .resources }}
        {{- if .gpus }}
        {{- $limits := default dict $resources.limits }}
        {{- $_ := set $limits "nvidia.com/gpu" .gpus }}
        {{- $_ := set $resources "limits" $limits }}
        {{- end }}
        {{- toYaml $resources | nindent 8 }}
      securityContext:
        {{- include "zelda.containerSecurityContext" (dict "root" $root "writableRoot" true) | nindent 8 }}
      volumeMounts:
        - name: dshm
          mountPath: /dev/shm
        {{- if $root.Values.trainer.rom.volume }}
        - name: rom
          mountPath: /roms
          readOnly: true
        {{- end }}
  volumes:
    - name: dshm
      emptyDir:
        medium: Memory
        sizeLimit: {{ .shmSize }}
    {{- with $root.Values.trainer.rom.volume }}
    - name: rom
      {{- toYaml . | nindent 6 }}
    {{- end }}
  {{- with .nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* "true" when KubeRay adds the Ray autoscaler to the head pod (never with Kueue, which reserves a fixed quota). */}}
{{- define "zelda.rayAutoscaling" -}}
{{- $t := .Values.trainer -}}
{{- if and $t.enabled $t.autoscaling.enabled (not $t.kueue.enabled) -}}true{{- end -}}
{{- end -}}

{{- define "zelda.rayAutoscalerName" -}}
{{- include "zelda.componentName" (dict "root" . "component" "ray-autoscaler") -}}
{{- end -}}

{{/* The RayCluster spec, shared by the standalone RayCluster (mode cluster) and the RayJob (mode job). */}}
{{- define "zelda.rayClusterSpec" -}}
{{- $t := .Values.trainer -}}
{{- $image := include "zelda.image" (dict "root" . "image" $t.image) -}}
rayVersion: {{ $t.rayVersion | quote }}
enableInTreeAutoscaling: {{ eq (include "zelda.rayAutoscaling" .) "true" }}
{{- if include "zelda.rayAutoscaling" . }}
autoscalerOptions:
  upscalingMode: {{ $t.autoscaling.upscalingMode }}
  idleTimeoutSeconds: {{ $t.autoscaling.idleTimeoutSeconds }}
  resources:
    {{- toYaml $t.autoscaling.resources | nindent 4 }}
  securityContext:
    {{- include "zelda.containerSecurityContext" (dict "root" . "writableRoot" false) | nindent 4 }}
{{- end }}
{{- if $t.rayTokenAuth }}
authOptions:
  mode: token
{{- end }}
headGroupSpec:
  serviceType: ClusterIP
  rayStartParams:
    {{- toYaml $t.head.rayStartParams | nindent 4 }}
  template:
    {{- include "zelda.rayPodTemplate" (dict "root" . "group" "head" "image" $image "resources" $t.head.resources "shmSize" $t.head.shmSize) | nindent 4 }}
workerGroupSpecs:
  - groupName: env-runners
    replicas: {{ $t.envRunners.replicas }}
    minReplicas: {{ $t.envRunners.minReplicas }}
    maxReplicas: {{ $t.envRunners.maxReplicas }}
    rayStartParams:
      {{- toYaml $t.envRunners.rayStartParams | nindent 6 }}
    template:
      {{- include "zelda.rayPodTemplate" (dict "root" . "group" "env-runners" "image" $image "resources" $t.envRunners.resources "shmSize" $t.envRunners.shmSize "nodeSelector" $t.envRunners.nodeSelector "tolerations" $t.envRunners.tolerations) | nindent 6 }}
  {{- if $t.learner.enabled }}
  - groupName: learner
    replicas: {{ $t.learner.replicas }}
    minReplicas: {{ $t.learner.replicas }}
    maxReplicas: {{ $t.learner.replicas }}
    rayStartParams:
      {{- toYaml $t.learner.rayStartParams | nindent 6 }}
    template:
      {{- include "zelda.rayPodTemplate" (dict "root" . "group" "learner" "image" (include "zelda.image" (dict "root" . "image" $t.learner.image)) "resources" $t.learner.resources "shmSize" $t.learner.shmSize "nodeSelector" $t.learner.nodeSelector "tolerations" $t.learner.tolerations "gpus" $t.learner.gpus) | nindent 6 }}
  {{- end }}
{{- end -}}
