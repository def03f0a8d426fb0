{{/*
The settings as `noderecover manifests` turns them into the pod's environment: seconds as whole
seconds, switches as true or empty, the dry run as the variable spells it. A value the binary
would refuse fails the render with one line naming it; nothing here reads the cluster.
*/}}

{{/* "true" when a value is empty: "", or null (which removes a default). */}}
{{- define "noderecover.empty" -}}
{{- if or (kindIs "invalid" .) (eq (toString .) "") -}}
true
{{- end -}}
{{- end -}}

{{/* A number or a string as the binary is given it: 1000000000, never 1e+09. */}}
{{- define "noderecover.text" -}}
{{- if or (kindIs "int" .) (kindIs "int64" .) (kindIs "float64" .) -}}
{{- printf "%d" (int64 .) -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* (list NAME VALUE MIN MAX): VALUE in whole seconds ("300", or "5m" as "300"), or fail. */}}
{{- define "noderecover.seconds" -}}
{{- $name := index . 0 -}}
{{- $v := index . 1 -}}
{{- $min := index . 2 -}}
{{- $max := index . 3 -}}
{{- $bad := printf "%s '%v' is not a whole number of seconds (300) or of hours, minutes and seconds (90s, 5m, 1h30m)" $name $v -}}
{{- $n := 0 -}}
{{- if kindIs "string" $v -}}
{{- if regexMatch "^[0-9]{1,10}$" $v -}}
{{- $n = atoi $v -}}
{{- else if and $v (regexMatch "^([0-9]{1,10}h)?([0-9]{1,10}m)?([0-9]{1,10}s)?$" $v) -}}
{{- range regexFindAll "[0-9]+[hms]" $v -1 -}}
{{- $unit := get (dict "h" 3600 "m" 60 "s" 1) (trunc -1 .) -}}
{{- $n = add $n (mul (atoi (trimSuffix (trunc -1 .) .)) $unit) -}}
{{- end -}}
{{- else -}}
{{- fail $bad -}}
{{- end -}}
{{- else if or (kindIs "int" $v) (kindIs "int64" $v) (kindIs "float64" $v) -}}
{{- if ne (float64 $v) (float64 (int64 $v)) -}}
{{- fail $bad -}}
{{- end -}}
{{- $n = int64 $v -}}
{{- else -}}
{{- fail $bad -}}
{{- end -}}
{{- if or (lt (int64 $n) (int64 $min)) (gt (int64 $n) (int64 $max)) -}}
{{- fail (printf "%s '%v' is not between %d and %d seconds" $name $v (int64 $min) (int64 $max)) -}}
{{- end -}}
{{- printf "%d" (int64 $n) -}}
{{- end -}}

{{/* (list NAME VALUE DEFAULT): "true" when on, "" when off; empty VALUE: DEFAULT. */}}
{{- define "noderecover.switch" -}}
{{- $name := index . 0 -}}
{{- $v := toString (index . 2) -}}
{{- if not (include "noderecover.empty" (index . 1)) -}}
{{- $v = toString (index . 1) -}}
{{- end -}}
{{- if eq $v "true" -}}
true
{{- else if ne $v "false" -}}
{{- fail (printf "%s '%s' is neither true nor false" $name $v) -}}
{{- end -}}
{{- end -}}

{{/* taintAfter in seconds: required, as for `noderecover manifests`. */}}
{{- define "noderecover.taintAfter" -}}
{{- if include "noderecover.empty" .Values.taintAfter -}}
{{- fail "taintAfter is required: seconds a node's Ready may be Unknown before it is tainted" -}}
{{- end -}}
{{- include "noderecover.seconds" (list "taintAfter" .Values.taintAfter 0 315360000) -}}
{{- end -}}

{{/* pruneAfter in seconds, "" when pruning is off; above taintAfter, or fail. */}}
{{- define "noderecover.pruneAfter" -}}
{{- if not (include "noderecover.empty" .Values.pruneAfter) -}}
{{- $prune := include "noderecover.seconds" (list "pruneAfter" .Values.pruneAfter 0 315360000) -}}
{{- $taint := include "noderecover.taintAfter" . -}}
{{- if le (atoi $prune) (atoi $taint) -}}
{{- fail (printf "pruneAfter (%s) must be greater than the taint threshold (%s): a node is tainted before it is deleted" $prune $taint) -}}
{{- end -}}
{{- $prune -}}
{{- end -}}
{{- end -}}

{{/* The dry run as NODE_RECOVERY_DRY_RUN spells it ("true" or "server"), "" when off. */}}
{{- define "noderecover.dryRun" -}}
{{- $v := "" -}}
{{- if not (include "noderecover.empty" .Values.dryRun) -}}
{{- $v = toString .Values.dryRun -}}
{{- end -}}
{{- if or (eq $v "client") (eq $v "true") -}}
true
{{- else if eq $v "server" -}}
server
{{- else if not (has $v (list "" "none" "false")) -}}
{{- fail (printf "dryRun '%s' is not one of client, server or none (true or false)" $v) -}}
{{- end -}}
{{- end -}}

{{/* Events are a write: none in a dry run, so no grant for them either. */}}
{{- define "noderecover.eventing" -}}
{{- if and (include "noderecover.switch" (list "events" .Values.events true)) (not (include "noderecover.dryRun" .)) -}}
true
{{- end -}}
{{- end -}}

{{/* repository:tag (the tag empty: the appVersion), or repository@digest. */}}
{{- define "noderecover.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/*
Names and labels as the widely used charts make them. The chart's name (app.kubernetes.io/name);
the objects' full name: the release's name, with the chart's appended unless it holds it already
(release noderecover: noderecover, as `noderecover manifests` names everything).
*/}}
{{- define "noderecover.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "noderecover.fullname" -}}
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

{{- define "noderecover.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What selects the pods: never the version or the chart, which change on an upgrade. */}}
{{- define "noderecover.selectorLabels" -}}
app.kubernetes.io/name: {{ include "noderecover.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* manifests' three labels and Helm's two (helm.sh/chart, managed-by). */}}
{{- define "noderecover.labels" -}}
helm.sh/chart: {{ include "noderecover.chart" . }}
{{ include "noderecover.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Where every namespaced object goes: namespace.name, or the release's namespace. */}}
{{- define "noderecover.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name -}}
{{- end -}}

{{- define "noderecover.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "noderecover.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Lease: leaseName, or the full name (noderecover for a release named noderecover). */}}
{{- define "noderecover.leaseName" -}}
{{- if include "noderecover.empty" .Values.leaseName -}}
{{- include "noderecover.fullname" . -}}
{{- else -}}
{{- .Values.leaseName -}}
{{- end -}}
{{- end -}}

{{/* The fence agent's (issue 23, fence.enabled): its objects' name, and labels apart from the
watcher's, so that no selector of the watcher's (the Deployment's, the Service's, the
PodMonitor's) takes the agents' pods. */}}
{{- define "noderecover.fenceName" -}}
{{- printf "%s-fence" (include "noderecover.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "noderecover.fenceSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-fence" (include "noderecover.name" .) }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "noderecover.fenceLabels" -}}
helm.sh/chart: {{ include "noderecover.chart" . }}
{{ include "noderecover.fenceSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: fence-agent
{{- end -}}

{{/* The agent's settings as `noderecover manifests --fence` passes them: each only when it is
not the agent's default, seconds as whole seconds, in manifests.c's fence_passed order; a value
the agent would refuse fails the render. Renders the env items. */}}
{{- define "noderecover.fenceEnv" -}}
{{- $f := .Values.fence -}}
{{- range list (list "check" "NODE_RECOVERY_FENCE_CHECK" 1 3600 5) (list "after" "NODE_RECOVERY_FENCE_AFTER" 1 86400 30) (list "isolatedAfter" "NODE_RECOVERY_FENCE_ISOLATED_AFTER" 1 86400 30) (list "renew" "NODE_RECOVERY_FENCE_RENEW" 1 86400 60) (list "action" "NODE_RECOVERY_FENCE_ACTION") (list "exec" "NODE_RECOVERY_FENCE_EXEC") (list "execTimeout" "NODE_RECOVERY_FENCE_EXEC_TIMEOUT" 1 3600 10) (list "watchdog" "NODE_RECOVERY_FENCE_WATCHDOG" "/dev/watchdog") (list "watchdogTimeout" "NODE_RECOVERY_FENCE_WATCHDOG_TIMEOUT" 1 3600 10) (list "kubeletUrl" "NODE_RECOVERY_FENCE_KUBELET_URL" "http://127.0.0.1:10248/healthz") }}
{{- $key := index . 0 -}}
{{- $v := get $f $key -}}
{{- if eq (len .) 5 -}}
{{- if not (include "noderecover.empty" $v) -}}
{{- $n := include "noderecover.seconds" (list (printf "fence.%s" $key) $v (index . 2) (index . 3)) -}}
{{- if ne (atoi $n) (index . 4) }}
- name: {{ index . 1 }}
  value: {{ $n | quote }}
{{- end -}}
{{- end -}}
{{- else if eq (len .) 3 -}}
{{- /* a text with a default: the default unless set; "" is a value (kubeletUrl: not checked) */ -}}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) (index . 2)) }}
- name: {{ index . 1 }}
  value: {{ toString $v | quote }}
{{- end -}}
{{- else if not (include "noderecover.empty" $v) }}
- name: {{ index . 1 }}
  value: {{ toString $v | quote }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The watcher's --fence: off, prefer (empty) or require, or fail. */}}
{{- define "noderecover.fenceMode" -}}
{{- $m := toString (default "prefer" .Values.fence.mode) -}}
{{- if not (has $m (list "off" "prefer" "require")) -}}
{{- fail (printf "fence.mode '%s' is not one of off, prefer or require" $m) -}}
{{- end -}}
{{- $m -}}
{{- end -}}
