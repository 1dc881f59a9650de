//go:build e2eunsafe

package render

// Built only with -tags e2eunsafe, for the end-to-end negative control that
// must show the audit check catching two CPOs writing at once. No flag,
// annotation or field of the product reaches this switch.
func init() { unsafeNoElection = true }
