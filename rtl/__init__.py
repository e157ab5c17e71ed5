"""Parameterized SystemVerilog modules (shipped as package data)."""
