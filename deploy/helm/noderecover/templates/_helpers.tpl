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
