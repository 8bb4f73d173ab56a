{{/* Literal secrets. The services refuse placeholders at start (zelda_rlaif.settings.PLACEHOLDER_SECRETS) and
     would crash-loop; the render refuses them first and names the value to set. */}}

{{/* dict value key [fix]: fails when value is a placeholder; empty values are left to the checks that need
     them. The message names where the value is, never the value. */}}
{{- define "zelda.refusePlaceholder" -}}
{{- $raw := toString (default "" .value) -}}
{{- $placeholders := list "changeme" "change-me" "change_me" "placeholder" "secret" "password" "minioadmin" "xxx" "todo" -}}
{{- if and $raw (or (has (lower $raw) $placeholders) (hasPrefix "<" $raw)) -}}
{{- fail (printf "%s is a placeholder that the services refuse at start: %s" .key (default "set a real secret there, or leave it empty and name a Secret you created in the existingSecret next to it" .fix)) -}}
{{- end -}}
{{- end -}}

{{/* dict root name key path: the same check on a Secret that already exists. Only `helm install/upgrade`
     against a cluster can look (lookup is empty in `helm template`, dry runs and Argo CD, where this passes). */}}
{{- define "zelda.refusePlaceholderInSecret" -}}
{{- if .name -}}
{{- $data := (lookup "v1" "Secret" .root.Release.Namespace .name).data | default dict -}}
{{- with index $data .key -}}
{{- include "zelda.refusePlaceholder" (dict "value" (b64dec .) "key" (printf "key %s of Secret %s (%s)" $.key $.name $.path) "fix" "put a real secret in that Secret") -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Every literal secret the chart or its dependencies would use. */}}
{{- define "zelda.refusePlaceholderSecrets" -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.bus.auth.password "key" "bus.auth.password") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.store.s3.accessKey "key" "store.s3.accessKey") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.store.s3.secretKey "key" "store.s3.secretKey") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.hud.auth.token "key" "hud.auth.token") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.minio.rootUser "key" "minio.rootUser") -}}
{{- include "zelda.refusePlaceholder" (dict "value" .Values.minio.rootPassword "key" "minio.rootPassword") -}}
{{- include "zelda.refusePlaceholderInSecret" (dict "root" . "name" .Values.bus.auth.existingSecret "key" .Values.bus.auth.passwordKey "path" "bus.auth.existingSecret") -}}
{{- include "zelda.refusePlaceholderInSecret" (dict "root" . "name" .Values.store.s3.existingSecret "key" .Values.store.s3.secretKeyKey "path" "store.s3.existingSecret") -}}
{{- if .Values.hud.enabled -}}
{{- include "zelda.refusePlaceholderInSecret" (dict "root" . "name" .Values.hud.auth.existingSecret "key" .Values.hud.auth.tokenKey "path" "hud.auth.existingSecret") -}}
{{- end -}}
{{- end -}}
