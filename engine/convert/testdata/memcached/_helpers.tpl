{{- define "memcached.unused" }}helpers are shared with the conversions{{ end }}
