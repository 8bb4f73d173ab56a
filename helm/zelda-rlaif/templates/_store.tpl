{{/* The object store: the MinIO dependency's name, the S3 endpoint, the credentials Secret. */}}

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

{{/* The Secret the services read S3 credentials from. Literal keys are rendered under the name the minio
     dependency reads its application user's secret from, so one Secret serves both. */}}
{{- define "zelda.s3SecretName" -}}
{{- if .Values.store.s3.existingSecret -}}
{{- .Values.store.s3.existingSecret -}}
{{- else if and .Values.store.s3.accessKey .Values.store.s3.secretKey -}}
{{- default (include "zelda.componentName" (dict "root" . "component" "s3")) (include "zelda.minioAppUserField" (dict "root" . "field" "existingSecret")) -}}
{{- else if hasPrefix "s3://" .Values.store.url -}}
{{- fail "an s3:// store needs credentials: set store.s3.existingSecret (keys accessKey/secretKey) or store.s3.accessKey and store.s3.secretKey" -}}
{{- end -}}
{{- end -}}

{{/* dict root field: a field of the minio dependency's application user (minio.users[0]); empty without the
     dependency or users. The dependency templates its values, so this does too. */}}
{{- define "zelda.minioAppUserField" -}}
{{- $minio := .root.Values.minio -}}
{{- if and $minio.enabled $minio.users -}}
{{- tpl (toString (dig .field "" (index $minio.users 0))) .root -}}
{{- end -}}
{{- end -}}
