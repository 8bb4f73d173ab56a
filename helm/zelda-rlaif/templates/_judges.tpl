{{/* Judges: where each judge kind's LLM is and which model it asks. A kind is a key of judges.kinds; with
     llm.inferenceServices.enabled it also needs its entry under llm.inferenceServices.models. */}}

{{/* dict root kind: "true" when the kind is served by its own LLMInferenceService (no llmUrl of its own). */}}
{{- define "zelda.judgeUsesInferenceService" -}}
{{- if and .root.Values.llm.inferenceServices.enabled (not (index .root.Values.judges.kinds .kind).llmUrl) -}}
true
{{- end -}}
{{- end -}}

{{/* dict root kind: the kind's llm.inferenceServices.models entry as YAML (read it with fromYaml). */}}
{{- define "zelda.llmModel" -}}
{{- $model := index .root.Values.llm.inferenceServices.models .kind -}}
{{- if not $model -}}
{{- fail (printf "llm.inferenceServices.enabled serves each judge kind from its own LLMInferenceService: add llm.inferenceServices.models.%s (name, uri, replicas, tensorParallel, resources) or set judges.kinds.%s.llmUrl" .kind .kind) -}}
{{- end -}}
{{- toYaml $model -}}
{{- end -}}

{{/* dict root kind: the LLM API base of one judge kind. */}}
{{- define "zelda.judgeLlmUrl" -}}
{{- $spec := index .root.Values.judges.kinds .kind -}}
{{- $isvc := .root.Values.llm.inferenceServices -}}
{{- if include "zelda.judgeUsesInferenceService" . -}}
{{- if not $isvc.gatewayUrl -}}
{{- fail "llm.inferenceServices.enabled needs llm.inferenceServices.gatewayUrl (the llm-d gateway base URL the judges reach)" -}}
{{- end -}}
{{- printf "%s/%s/%s/v1" (trimSuffix "/" $isvc.gatewayUrl) .root.Release.Namespace (include "zelda.llmServiceName" .) -}}
{{- else -}}
{{- default .root.Values.judges.llm.url $spec.llmUrl -}}
{{- end -}}
{{- end -}}

{{/* dict root kind: the model name a judge kind sends; the served name of its LLMInferenceService if any. */}}
{{- define "zelda.judgeModel" -}}
{{- if include "zelda.judgeUsesInferenceService" . -}}
{{- (include "zelda.llmModel" . | fromYaml).name -}}
{{- else -}}
{{- (index .root.Values.judges.kinds .kind).model -}}
{{- end -}}
{{- end -}}

{{/* dict root kind */}}
{{- define "zelda.llmServiceName" -}}
{{- include "zelda.componentName" (dict "root" .root "component" (printf "llm-%s" .kind)) -}}
{{- end -}}
