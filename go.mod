module github.com/gocuda/cuda

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	golang.org/x/mod v0.42.0
	golang.org/x/tools v0.52.0
	modernc.org/cc/v4 v4.31.0
	modernc.org/token v1.1.0
)

require (
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sync v0.24.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/opt v0.2.0 // indirect
	modernc.org/sortutil v1.2.1 // indirect
	modernc.org/strutil v1.2.1 // indirect
)
