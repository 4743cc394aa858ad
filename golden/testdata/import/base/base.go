// Package base stands for an already generated package, such as cudart,
// whose types the import case references. The case's packages.txt
// configures it; TestGoldenBuilds generates it here.
package base
