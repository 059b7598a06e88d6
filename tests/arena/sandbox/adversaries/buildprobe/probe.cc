// Adversary: what a bot's build step sees of its kernel, and a fork bomb, bounded.
//
// Run by the bot's Makefile at build time, as the arena's build runs it. Prints one JSON
// object: its user, no_new_privs, the Seccomp line of /proc/self/status, the kernel's
// release (gVisor's is not the host's), whether PTRACE_TRACEME is allowed (the arena's
// seccomp profile refuses ptrace, Docker's default allows it), and how many children it
// could fork (each pauses) before the system refused one, at most kMaxChildren, with the
// error. Every child is killed and reaped before it prints, so nothing outlives the build.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr int kMaxChildren = 1000;

std::string status_line(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string value = line.substr(key.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

// In a child, so that being traced by make changes nothing here.
std::string ptrace_traceme() {
  pid_t pid = fork();
  if (pid == 0) {
    _exit(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == 0 ? 0 : errno);
  }
  if (pid < 0) return std::string("fork failed: ") + strerrorname_np(errno);
  int status = 0;
  waitpid(pid, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return code == 0 ? "allowed" : (code > 0 ? strerrorname_np(code) : "killed");
}

}  // namespace

int main() {
  struct utsname uts {};
  uname(&uts);
  std::string seccomp = status_line("Seccomp");
  std::string ptrace_result = ptrace_traceme();
  std::vector<pid_t> children;
  std::string fork_error = "none";
  while (static_cast<int>(children.size()) < kMaxChildren) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid < 0) {
      fork_error = strerrorname_np(errno);
      break;
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  std::printf(
      "{\"uid\": %d, \"no_new_privs\": %d, \"seccomp\": \"%s\", \"release\": \"%s\", "
      "\"ptrace\": \"%s\", \"forks\": %zu, \"fork_error\": \"%s\"}\n",
      static_cast<int>(getuid()), prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), seccomp.c_str(),
      uts.release, ptrace_result.c_str(), children.size(), fork_error.c_str());
  return 0;
}
