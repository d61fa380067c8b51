package sessions

import "testing"

func BenchmarkVerifyUncached(b *testing.B) { VerifyUncached(b) }

func BenchmarkVerifyCached(b *testing.B) { VerifyCached(b) }

func BenchmarkVerifyCachedParallel(b *testing.B) { VerifyCachedParallel(b) }

func BenchmarkSign(b *testing.B) { Sign(b) }

func BenchmarkBearerCheck(b *testing.B) { BearerCheck(b) }
