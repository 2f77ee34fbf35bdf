package main

func int80(nr, a1, a2, a3 uintptr) uintptr
