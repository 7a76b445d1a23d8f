{{ define "x" }}{{ nosuchfunc }}{{ end }}
