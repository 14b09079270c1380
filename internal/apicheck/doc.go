// Package apicheck holds only a test: it pins every signature of the public
// contract (CONTRACT.md, at the repository root) to its exact type, so that a change that
// would break code written against the contract fails to compile here.
package apicheck
