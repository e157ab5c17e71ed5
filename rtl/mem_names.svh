// Names of memory init files: decimal3(7) is "007" (the emitter writes coef_l<lll>_i<iii>_b<bbb>.mem).
function automatic logic [23:0] decimal3(input int v);
  decimal3[23:16] = 8'd48 + 8'((v / 100) % 10);
  decimal3[15:8] = 8'd48 + 8'((v / 10) % 10);
  decimal3[7:0] = 8'd48 + 8'(v % 10);
endfunction
