# kan_online_axi: the learner's clock target, 250 MHz (codesign 0.1.0)
create_clock -period 4.000 -name aclk [get_ports aclk]
