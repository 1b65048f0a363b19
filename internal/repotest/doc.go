// Package repotest checks properties of the repository as a whole: no references outside it,
// the README's commands run as written, and the layout rules of CONTRIBUTING.md (import rules,
// a doc.go per package, no long functions outside a named list of numerical kernels).
package repotest
