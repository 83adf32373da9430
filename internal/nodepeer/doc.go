// Package nodepeer is what the module's tests share to run against peers
// written for Node.js (the npm packages `make deps` installs from the
// committed lock files): one rule for a missing peer. Under CI=true a
// missing peer fails the test, so CI cannot pass by skipping it; anywhere
// else the test is skipped with what is missing and how to install it.
package nodepeer
