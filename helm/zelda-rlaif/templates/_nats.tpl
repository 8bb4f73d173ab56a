{{/* NATS: the dependency's name, the URLs our services and KEDA reach, the password Secret. */}}

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

{{/* The Secret the services read the password from. A literal bus.auth.password is rendered under the name the
     nats dependency's server reads (nats.container.env.NATS_PASSWORD), so one Secret serves both. */}}
{{- define "zelda.natsSecretName" -}}
{{- if .Values.bus.auth.existingSecret -}}
{{- .Values.bus.auth.existingSecret -}}
{{- else if .Values.bus.auth.password -}}
{{- default (include "zelda.componentName" (dict "root" . "component" "nats-auth")) (include "zelda.natsServerSecretName" .) -}}
{{- end -}}
{{- end -}}

{{/* The Secret (and key) the nats dependency's server reads its password from; empty without the dependency.
     The dependency templates its values, so this does too. */}}
{{- define "zelda.natsServerSecretName" -}}
{{- if .Values.nats.enabled -}}
{{- tpl (dig "container" "env" "NATS_PASSWORD" "valueFrom" "secretKeyRef" "name" "" .Values.nats) . -}}
{{- end -}}
{{- end -}}

{{- define "zelda.natsServerSecretKey" -}}
{{- if .Values.nats.enabled -}}
{{- tpl (dig "container" "env" "NATS_PASSWORD" "valueFrom" "secretKeyRef" "key" "" .Values.nats) . -}}
{{- end -}}
{{- end -}}
