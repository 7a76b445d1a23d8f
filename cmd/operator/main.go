// Command operator is the template-driven Kubernetes operator.
package main

import (
	"os"

	"github.com/tmplop/operator/cmd/operator/app"
)

func main() { os.Exit(app.Main()) }
