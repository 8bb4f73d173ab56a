{{/* Helpers every template uses: names, labels, images, security contexts. The helpers of one component
     live in its own file: _nats.tpl, _store.tpl, _env.tpl (the environment and init container every service
     shares), _hud.tpl, _judges.tpl, _trainer.tpl, _raycluster.tpl. */}}

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
