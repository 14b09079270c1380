// Package apicheck holds only a test: it pins every signature of the public
// API contract (shared/API.md) to its exact type, so that a change that
// would break code written against the contract fails to compile here.
package apicheck
