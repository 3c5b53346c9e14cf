// Package docs holds rebootwatch's documentation (design.md, architecture.md,
// performance.md, cli.md and the user guides) and, in its test, the check that
// keeps it reachable from the code: every "DESIGN §N" (and "§N rule M")
// citation in the repository names a section, and a rule, that docs/design.md
// has, every relative link in README.md, CHANGELOG.md and docs/*.md names a
// file that exists and, for a Markdown file, a heading or anchor in it,
// every picture in screenshots/ is shown by one of those pages, and
// architecture.md's package map names every Go package of the module.
//
// It holds no code that the commands import, and its test reads files only.
package docs
