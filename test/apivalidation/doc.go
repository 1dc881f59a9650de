// Package apivalidation proves, against a real kube-apiserver, that the
// project's CRDs and admission policies accept valid objects with their
// defaults and refuse invalid ones with messages that name the field.
package apivalidation
