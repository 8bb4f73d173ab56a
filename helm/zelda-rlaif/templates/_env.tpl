{{/* What every service of ours shares: its environment (NATS, object store, logging) and the provision init
     container. */}}

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

{{/* The provision init container: dict root image writableRoot. Fails (and is retried) until NATS answers. */}}
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
