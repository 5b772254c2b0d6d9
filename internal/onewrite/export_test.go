package onewrite

// SetSendHook sets the function called before each system call that sends
// bytes (nil: none). Set it before serving.
func SetSendHook(f func()) { sendHook = f }
