//go:build e2eunsafe

package render

// unsafeNoElection renders the CPO without leader election and with a
// surging RollingUpdate. Only a build with -tags e2eunsafe sets it, for the
// end-to-end negative control that must show the audit check catching two
// CPOs writing at once. No flag, annotation or field of the product reaches
// this switch.
const unsafeNoElection = true
