//go:build tools

// The AWS Lambda Runtime Interface Emulator, for cpsync's tests that run the deployed function assets as
// Lambda runs them. Its module has no tags: the version is a pinned pseudo-version.
package tools

import _ "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
