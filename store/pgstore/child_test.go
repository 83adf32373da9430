package pgstore_test

const roleEnv = "PGSTORE_TEST_ROLE"

func child(role string) int { return 2 }
