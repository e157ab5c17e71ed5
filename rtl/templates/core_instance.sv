  ${core} #(
${parameters}
  ) u_core (
${connections}
  );
