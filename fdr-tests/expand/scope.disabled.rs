fn scope() {}
