package driver

//go:generate go run ../../../gen -pkg driver
