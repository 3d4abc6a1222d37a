module github.com/tierkv/tierkv/bindings/go

go 1.24
