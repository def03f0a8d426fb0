module noderecover/bench/standin

go 1.19
