module example.com/externalstore

go 1.26.0

require github.com/clutchprotocol/clutch v0.0.0

require (
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
)

replace github.com/clutchprotocol/clutch => ../../..
