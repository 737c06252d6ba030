// Package gonumtest checks package cusolver against an independent CPU
// reference, gonum's mat (LU, Cholesky, QR, SVD, symmetric eigenvalues):
// the solutions and factors beside gonum's, the residuals ||A·x - b||,
// ||Q·R - A||, ||U·S·Vᵀ - A|| and ||A·V - V·Λ||, and the orthogonality of
// Q, U, V, at odd sizes (1, 3, 97, and 1000 and 4099 on a GPU) in both
// layouts. It is a module of its own so that the library's module
// requires nothing but purego: gonum is needed by these tests alone.
package gonumtest
