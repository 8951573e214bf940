module github.com/askctl/askctl

go 1.25.0

require github.com/google/go-cmp v0.7.0
