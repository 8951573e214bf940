module github.com/askctl/askctl

go 1.25.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/rogpeppe/go-internal v1.16.0
	github.com/tidwall/gjson v1.20.0
	github.com/urfave/cli/v3 v3.14.0
	golang.org/x/sys v0.26.0
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
