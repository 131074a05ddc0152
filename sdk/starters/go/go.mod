module thousand-arena/starter

go 1.19
