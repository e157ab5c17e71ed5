# Vivado non-project flow of mlp_online_axi at 250 MHz, written by codesign 0.1.0.
# Not run by codesign. From any folder:
#   vivado -mode batch -source vivado_mlp_online_axi.tcl -tclargs <part>     (e.g. xcvu9p-flga2104-2L-e)
# Reports: vivado_mlp_online_axi/utilization.rpt, vivado_mlp_online_axi/timing_summary.rpt; routed checkpoint vivado_mlp_online_axi/routed.dcp.
if {$argc < 1} {
    puts "usage: vivado -mode batch -source vivado_mlp_online_axi.tcl -tclargs <part>"
    exit 2
}
set part [lindex $argv 0]
# the .mem files are read from this folder (the tops' MEM_DIR is ".")
cd [file dirname [file normalize [info script]]]
file mkdir vivado_mlp_online_axi
read_verilog -sv {pipe_reg.sv fixed_cast.sv online_control.sv mlp_layer.sv flag_count.sv mlp_online.sv learner_axi.sv mlp_online_axi.sv}
read_mem {weights_l000.mem weights_l001.mem}
read_xdc mlp_online_axi.xdc
synth_design -top mlp_online_axi -part $part -include_dirs {.}
opt_design
place_design
route_design
report_utilization -file vivado_mlp_online_axi/utilization.rpt
report_timing_summary -file vivado_mlp_online_axi/timing_summary.rpt
write_checkpoint -force vivado_mlp_online_axi/routed.dcp
