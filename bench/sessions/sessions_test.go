package sessions

import "testing"

func BenchmarkVerifyUncached(b *testing.B) { VerifyUncached(b) }

func BenchmarkVerifyCached(b *testing.B) { VerifyCached(b) }

func BenchmarkBearerCheck(b *testing.B) { BearerCheck(b) }
