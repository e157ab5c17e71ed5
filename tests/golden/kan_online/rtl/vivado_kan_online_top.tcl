# Vivado non-project flow of kan_online_top at 250 MHz, written by codesign 0.1.0.
# Not run by codesign. From any folder:
#   vivado -mode batch -source vivado_kan_online_top.tcl -tclargs <part>     (e.g. xcvu9p-flga2104-2L-e)
# Reports: vivado_kan_online_top/utilization.rpt, vivado_kan_online_top/timing_summary.rpt; routed checkpoint vivado_kan_online_top/routed.dcp.
if {$argc < 1} {
    puts "usage: vivado -mode batch -source vivado_kan_online_top.tcl -tclargs <part>"
    exit 2
}
set part [lindex $argv 0]
# the .mem files are read from this folder (the tops' MEM_DIR is ".")
cd [file dirname [file normalize [info script]]]
file mkdir vivado_kan_online_top
read_verilog -sv {pipe_reg.sv fixed_cast.sv const_mult.sv adder_tree.sv shared_mult.sv online_control.sv kan_grid.sv kan_decode.sv kan_bank.sv kan_layer.sv kan_host.sv flag_count.sv kan_online.sv kan_online_top.sv}
read_mem {basis.mem dbasis.mem coef_l000_i000_b000.mem coef_l000_i000_b001.mem coef_l000_i000_b002.mem coef_l000_i000_b003.mem coef_l000_i001_b000.mem coef_l000_i001_b001.mem coef_l000_i001_b002.mem coef_l000_i001_b003.mem coef_l001_i000_b000.mem coef_l001_i000_b001.mem coef_l001_i000_b002.mem coef_l001_i000_b003.mem coef_l001_i001_b000.mem coef_l001_i001_b001.mem coef_l001_i001_b002.mem coef_l001_i001_b003.mem coef_l001_i002_b000.mem coef_l001_i002_b001.mem coef_l001_i002_b002.mem coef_l001_i002_b003.mem coef_l001_i003_b000.mem coef_l001_i003_b001.mem coef_l001_i003_b002.mem coef_l001_i003_b003.mem}
read_xdc kan_online_top.xdc
synth_design -top kan_online_top -part $part -include_dirs {.}
opt_design
place_design
route_design
report_utilization -file vivado_kan_online_top/utilization.rpt
report_timing_summary -file vivado_kan_online_top/timing_summary.rpt
write_checkpoint -force vivado_kan_online_top/routed.dcp
