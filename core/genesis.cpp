// core/genesis.cpp - libgenesis.so is the core static library linked whole;
// this file only anchors the shared-library target.
