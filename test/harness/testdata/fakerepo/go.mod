module fakerepo

go 1.26
