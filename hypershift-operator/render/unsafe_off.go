//go:build !e2eunsafe

package render

// unsafeNoElection is false in every build but the e2eunsafe one (see
// unsafe_e2e.go): the CPO is rendered with leader election and Recreate.
const unsafeNoElection = false
