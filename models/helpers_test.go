package models_test

import (
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

func postgresOpen(url string) gorm.Dialector { return postgres.Open(url) }
