{{/* Names ------------------------------------------------------------------------------------------ */}}

{{- define "zelda.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "zelda.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's resource name: <fullname>-<component>, kept within the 63-character DNS label limit. */}}
{{- define "zelda.componentName" -}}
{{- printf "%s-%s" (include "zelda.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "zelda.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "zelda.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels ----------------------------------------------------------------------------------------- */}}

{{- define "zelda.selectorLabels" -}}
app.kubernetes.io/name: {{ include "zelda.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "zelda.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "zelda.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: zelda-rlaif
{{- end -}}

{{/* dict root component */}}
{{- define "zelda.componentSelectorLabels" -}}
{{ include "zelda.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "zelda.componentLabels" -}}
{{ include "zelda.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Images: dict root image. `reference` wins; else <registry>/<name>:<tag or appVersion><suffix>. ----- */}}
{{- define "zelda.image" -}}
{{- if .image.reference -}}
{{- .image.reference -}}
{{- else -}}
{{- $tag := default .root.Chart.AppVersion (default .root.Values.image.tag .image.tag) -}}
{{- printf "%s/%s:%s%s" (trimSuffix "/" .root.Values.image.registry) .image.name $tag (default "" .image.suffix) -}}
{{- end -}}
{{- end -}}

{{/* Empty without pull secrets; use as: with include "zelda.imagePullSecrets" . -> nindent. */}}
{{- define "zelda.imagePullSecrets" -}}
{{- with .Values.image.pullSecrets -}}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Security contexts. On OpenShift the namespace's SCC picks the UID, so none is pinned here. ---------- */}}
{{- define "zelda.podSecurityContext" -}}
{{- $ctx := deepCopy .Values.podSecurityContext -}}
{{- if .Values.global.openshift -}}
{{- $ctx = omit $ctx "runAsUser" "runAsGroup" "fsGroup" -}}
{{- end -}}
{{- toYaml $ctx -}}
{{- end -}}

{{/* dict root writableRoot: Ray writes all over its home and /tmp, so Ray pods keep a writable root. */}}
{{- define "zelda.containerSecurityContext" -}}
{{- $ctx := deepCopy .root.Values.containerSecurityContext -}}
{{- if .writableRoot -}}
{{- $_ := set $ctx "readOnlyRootFilesystem" false -}}
{{- end -}}
{{- $_ := set $ctx "runAsNonRoot" true -}}
{{- toYaml $ctx -}}
{{- end -}}

{{/* Endpoints -------------------------------------------------------------------------------------- */}}

{{- define "zelda.natsFullname" -}}
{{- if .Values.nats.fullnameOverride -}}
{{- .Values.nats.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "nats" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-nats" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "zelda.natsUrl" -}}
{{- if .Values.bus.url -}}
{{- .Values.bus.url -}}
{{- else if .Values.nats.enabled -}}
{{- printf "nats://%s.%s.svc:4222" (include "zelda.natsFullname" .) .Release.Namespace -}}
{{- else -}}
{{- fail "bus.url is empty and the nats dependency is disabled: set bus.url to your NATS server (nats://host:4222) or nats.enabled=true" -}}
{{- end -}}
{{- end -}}

{{- define "zelda.natsMonitoringEndpoint" -}}
{{- if .Values.bus.monitoringEndpoint -}}
{{- .Values.bus.monitoringEndpoint -}}
{{- else if .Values.nats.enabled -}}
{{- printf "%s-headless.%s.svc.cluster.local:8222" (include "zelda.natsFullname" .) .Release.Namespace -}}
{{- else -}}
{{- fail "judges.autoscaling.mode=keda needs bus.monitoringEndpoint (host:8222 of your NATS monitoring port) when the nats dependency is disabled" -}}
{{- end -}}
{{- end -}}

{{- define "zelda.minioFullname" -}}
{{- if .Values.minio.fullnameOverride -}}
{{- .Values.minio.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "minio" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-minio" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "zelda.s3Endpoint" -}}
{{- if .Values.store.s3.endpoint -}}
{{- .Values.store.s3.endpoint -}}
{{- else if .Values.minio.enabled -}}
{{- printf "http://%s.%s.svc:9000" (include "zelda.minioFullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Secret names: the existing Secret, or the one this chart makes from literal values. --------------- */}}

{{- define "zelda.natsSecretName" -}}
{{- if .Values.bus.auth.existingSecret -}}
{{- .Values.bus.auth.existingSecret -}}
{{- else if .Values.bus.auth.password -}}
{{- include "zelda.componentName" (dict "root" . "component" "nats-auth") -}}
{{- end -}}
{{- end -}}

{{- define "zelda.s3SecretName" -}}
{{- if .Values.store.s3.existingSecret -}}
{{- .Values.store.s3.existingSecret -}}
{{- else if and .Values.store.s3.accessKey .Values.store.s3.secretKey -}}
{{- include "zelda.componentName" (dict "root" . "component" "s3") -}}
{{- else if hasPrefix "s3://" .Values.store.url -}}
{{- fail "an s3:// store needs credentials: set store.s3.existingSecret (keys accessKey/secretKey) or store.s3.accessKey and store.s3.secretKey" -}}
{{- end -}}
{{- end -}}

{{- define "zelda.hudSecretName" -}}
{{- if .Values.hud.auth.existingSecret -}}
{{- .Values.hud.auth.existingSecret -}}
{{- else if .Values.hud.auth.token -}}
{{- include "zelda.componentName" (dict "root" . "component" "hud-auth") -}}
{{- else -}}
{{- fail "the HUD listens beyond loopback in a pod and needs an access token: set hud.auth.existingSecret or hud.auth.token" -}}
{{- end -}}
{{- end -}}

{{/* Environment every service of ours shares: NATS, object store, logging. ----------------------------- */}}
{{- define "zelda.commonEnv" -}}
- name: ZELDA_NATS_URL
  value: {{ include "zelda.natsUrl" . | quote }}
{{- with .Values.bus.auth.user }}
- name: ZELDA_NATS_USER
  value: {{ . | quote }}
{{- end }}
{{- with include "zelda.natsSecretName" . }}
- name: ZELDA_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.bus.auth.passwordKey }}
{{- end }}
- name: ZELDA_STORE_URL
  value: {{ .Values.store.url | quote }}
{{- with include "zelda.s3Endpoint" . }}
- name: ZELDA_STORE_S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: ZELDA_STORE_S3_REGION
  value: {{ .Values.store.s3.region | quote }}
{{- with include "zelda.s3SecretName" . }}
- name: ZELDA_STORE_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.store.s3.accessKeyKey }}
- name: ZELDA_STORE_S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.store.s3.secretKeyKey }}
{{- end }}
- name: ZELDA_LOG_LEVEL
  value: {{ .Values.logging.level | quote }}
- name: ZELDA_LOG_FORMAT
  value: {{ .Values.logging.format | quote }}
{{- end -}}

{{/* The provision init container: dict root image. Fails (and is retried) until NATS answers. --------- */}}
{{- define "zelda.provisionInitContainer" -}}
- name: provision
  image: {{ .image }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command: ["zelda-rlaif", "provision"]
  env:
    {{- include "zelda.commonEnv" .root | nindent 4 }}
  resources:
    {{- toYaml .root.Values.provision.resources | nindent 4 }}
  securityContext:
    {{- include "zelda.containerSecurityContext" (dict "root" .root "writableRoot" .writableRoot) | nindent 4 }}
  {{- if not .writableRoot }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
  {{- end }}
{{- end -}}

{{/* Judges ----------------------------------------------------------------------------------------- */}}

{{/* dict root kind: the LLM API base of one judge kind. */}}
{{- define "zelda.judgeLlmUrl" -}}
{{- $spec := index .root.Values.judges.kinds .kind -}}
{{- $isvc := .root.Values.llm.inferenceServices -}}
{{- if $spec.llmUrl -}}
{{- $spec.llmUrl -}}
{{- else if $isvc.enabled -}}
{{- if not $isvc.gatewayUrl -}}
{{- fail "llm.inferenceServices.enabled needs llm.inferenceServices.gatewayUrl (the llm-d gateway base URL the judges reach)" -}}
{{- end -}}
{{- printf "%s/%s/%s/v1" (trimSuffix "/" $isvc.gatewayUrl) .root.Release.Namespace (include "zelda.llmServiceName" (dict "root" .root "kind" .kind)) -}}
{{- else -}}
{{- .root.Values.judges.llm.url -}}
{{- end -}}
{{- end -}}

{{/* dict root kind: the model name a judge kind sends; the served name of its LLMInferenceService if any. */}}
{{- define "zelda.judgeModel" -}}
{{- if and .root.Values.llm.inferenceServices.enabled (not (index .root.Values.judges.kinds .kind).llmUrl) -}}
{{- (index .root.Values.llm.inferenceServices.models .kind).name -}}
{{- else -}}
{{- (index .root.Values.judges.kinds .kind).model -}}
{{- end -}}
{{- end -}}

{{- define "zelda.llmServiceName" -}}
{{- include "zelda.componentName" (dict "root" .root "component" (printf "llm-%s" .kind)) -}}
{{- end -}}

{{/* Trainer ---------------------------------------------------------------------------------------- */}}

{{- define "zelda.runId" -}}
{{- default .Release.Name .Values.trainer.runId -}}
{{- end -}}

{{/* KubeRay refuses RayJob names over 47 characters and RayCluster names over 53 (it appends suffixes). */}}
{{- define "zelda.rayJobName" -}}
{{- $name := printf "%s-train-%s" (include "zelda.fullname" .) (include "zelda.runId" . | lower) -}}
{{- if gt (len $name) 47 -}}
{{- fail (printf "the RayJob name %q is longer than KubeRay's 47 characters: shorten trainer.runId or set fullnameOverride" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{- define "zelda.rayClusterName" -}}
{{- $name := printf "%s-ray" (include "zelda.fullname" .) -}}
{{- if gt (len $name) 53 -}}
{{- fail (printf "the RayCluster name %q is longer than KubeRay's 53 characters: set fullnameOverride" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* The command the RayJob runs on the head pod. */}}
{{- define "zelda.trainerEntrypoint" -}}
{{- $args := list "zelda-rlaif" "trainer" "--ray-address" "auto" "--no-progress" -}}
{{- if .Values.trainer.resume -}}
{{- $args = append $args "--resume" -}}
{{- end -}}
{{- range .Values.trainer.extraArgs -}}
{{- $args = append $args (. | toString | squote) -}}
{{- end -}}
{{- join " " $args -}}
{{- end -}}

{{/* Environment of every Ray container (head, workers, submitter): the trainer reads its settings in the
     driver on the head and in the env runners on the workers. */}}
{{- define "zelda.trainerEnv" -}}
{{ include "zelda.commonEnv" . }}
- name: ZELDA_TRAINER_RUN_ID
  value: {{ include "zelda.runId" . | quote }}
- name: ZELDA_TRAINER_EPOCHS
  value: {{ .Values.trainer.epochs | quote }}
- name: ZELDA_TRAINER_NUM_ENV_RUNNERS
  value: {{ .Values.trainer.numEnvRunners | quote }}
- name: ZELDA_TRAINER_ENVS_PER_RUNNER
  value: {{ .Values.trainer.envsPerRunner | quote }}
- name: ZELDA_TRAINER_STEPS_PER_EPOCH
  value: {{ .Values.trainer.stepsPerEpoch | quote }}
- name: ZELDA_TRAINER_NUM_GPUS_PER_LEARNER
  value: {{ ternary .Values.trainer.learner.gpus 0 .Values.trainer.learner.enabled | quote }}
- name: ZELDA_TRAINER_SHAPING_MODE
  value: {{ .Values.trainer.shapingMode | quote }}
{{- if .Values.trainer.rom.volume }}
- name: ZELDA_TRAINER_ROM
  value: {{ printf "/roms/%s" .Values.trainer.rom.file | quote }}
{{- if .Values.trainer.rom.stateFile }}
- name: ZELDA_TRAINER_STATE
  value: {{ printf "/roms/%s" .Values.trainer.rom.stateFile | quote }}
{{- end }}
{{- end }}
{{- if not .Values.trainer.rayTokenAuth }}
- name: RAY_AUTH_MODE
  value: disabled
{{- end }}
- name: RAY_USAGE_STATS_ENABLED
  value: "0"
- name: OMP_NUM_THREADS
  value: "1"
{{- with .Values.trainer.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* dict root group image resources shmSize rayStartParams replicas nodeSelector tolerations gpus:
     one pod template of the RayCluster (the head when group is "head"). */}}
{{- define "zelda.rayPodTemplate" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- include "zelda.componentLabels" (dict "root" $root "component" "trainer") | nindent 4 }}
    zelda-rlaif/ray-group: {{ .group }}
spec:
  serviceAccountName: {{ include "zelda.serviceAccountName" $root }}
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

{{/* The RayCluster spec, shared by the standalone RayCluster (mode cluster) and the RayJob (mode job). */}}
{{- define "zelda.rayClusterSpec" -}}
{{- $t := .Values.trainer -}}
{{- $image := include "zelda.image" (dict "root" . "image" $t.image) -}}
rayVersion: {{ $t.rayVersion | quote }}
enableInTreeAutoscaling: {{ and $t.autoscaling.enabled (not $t.kueue.enabled) }}
{{- if and $t.autoscaling.enabled (not $t.kueue.enabled) }}
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
