module github.com/taskcluster/tc-profile/clients/go

go 1.19
