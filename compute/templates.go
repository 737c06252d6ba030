package compute

import (
	"embed"
	"strings"
	"text/template"
)

// The CUDA C of the package's kernels is in templates/, a file per family
// (elementwise, reduction, rows, argmax), each kernel's text a named
// template ({{define "name"}}) whose fields are a struct's of this
// package, named for what they are: the Go code computes the fragments
// (parameter lists, loads, the user's expressions) and the templates lay
// them out. The templates are parsed once, when the package starts.

//go:embed templates/*.cu.tmpl
var templateFiles embed.FS

var kernelTemplates = template.Must(template.New("kernels").Option("missingkey=error").ParseFS(templateFiles, "templates/*.cu.tmpl"))

// render returns the text of the kernel template name for data. Its
// templates and their data are the package's own, tested for every
// family and type (TestKernelSources): an error is a bug of the package,
// not of its caller's input, and panics.
func render(name string, data any) string {
	var b strings.Builder
	if err := kernelTemplates.ExecuteTemplate(&b, name, data); err != nil {
		panic("compute: kernel template " + name + ": " + err.Error())
	}
	return b.String()
}
