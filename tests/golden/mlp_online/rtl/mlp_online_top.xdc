# mlp_online_top: the learner's clock target, 250 MHz (codesign 0.1.0)
create_clock -period 4.000 -name ap_clk [get_ports ap_clk]
