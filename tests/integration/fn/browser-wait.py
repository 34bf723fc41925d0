#!/usr/bin/python3
"""browser-wait.py - a real browser meets hk-activate's waiting page.

    browser-wait.py URL WANT OUTDIR [SECONDS]

Headless Chromium (Debian's /usr/bin/chromium, driven by Selenium through
/usr/bin/chromedriver) loads URL, a sleeping service's, and must see the
waiting page (an element with id "hk-waiting-page"), then, without any
click, end on the service's own answer: a page whose text contains WANT,
within SECONDS (default 30).  Screenshots of both go into OUTDIR as
waiting.png and final.png.  Prints one line per fact:

    waiting TITLE       the page first shown
    final TEXT          the text of the page it ended on
    screenshot PATH     for each screenshot

and exits 0, or 1 with the reason on stderr.

Chromium must never reach an address outside 127.0.0.0/8: background
networking, updates, sync, metrics and the like are off, no proxy is
used, and every host name but *.localhost fails to resolve.  It runs as
root here, so without its sandbox, with a temporary profile.
"""
import os
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

FLAGS = [
    "--headless=new",
    "--no-sandbox",  # root, in a container: no user namespaces
    "--disable-dev-shm-usage",
    "--window-size=900,600",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-proxy-server",
    "--host-resolver-rules=MAP *.localhost 127.0.0.1, MAP * ~NOTFOUND",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-extensions",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    "--disable-features=OptimizationHints,MediaRouter,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater,"
    "InterestFeedContentSuggestions,PrivacySandboxSettings4",
    "--password-store=basic",
    "--use-mock-keychain",
]


def page_state(driver):
    """("waiting", title) / ("final", text) / (None, None) mid-load."""
    try:
        if driver.find_elements(By.ID, "hk-waiting-page"):
            return "waiting", driver.title
        return "final", driver.find_element(By.TAG_NAME, "body").text
    except WebDriverException:
        return None, None


def main():
    if len(sys.argv) not in (4, 5):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 64
    url, want, outdir = sys.argv[1:4]
    limit = float(sys.argv[4]) if len(sys.argv) == 5 else 30.0
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            sys.stderr.write("browser-wait: %s: not installed\n" % tool)
            return 1
    profile = tempfile.mkdtemp(prefix="hk-chromium.")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in FLAGS + ["--user-data-dir=" + profile]:
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        return run(driver, url, want, outdir, limit)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def run(driver, url, want, outdir, limit):
    driver.set_page_load_timeout(limit)
    end = time.monotonic() + limit
    driver.get(url)
    state, what = page_state(driver)
    if state != "waiting":
        sys.stderr.write("browser-wait: no waiting page first: %r\n" % what)
        return 1
    print("waiting %s" % what)
    shot(driver, outdir, "waiting.png")
    # A reload in progress can show the page half gone or half built:
    # only the service's text itself ends the wait.
    while time.monotonic() < end:
        state, what = page_state(driver)
        if state == "final" and want in what:
            break
        time.sleep(0.1)
    else:
        sys.stderr.write("browser-wait: no %r after %g s; last: %s %r\n" %
                         (want, limit, state, what))
        return 1
    print("final %s" % what.replace("\n", " "))
    shot(driver, outdir, "final.png")
    return 0


def shot(driver, outdir, name):
    path = os.path.join(outdir, name)
    if not driver.save_screenshot(path):
        raise SystemExit("browser-wait: unable to save %s" % path)
    print("screenshot %s" % path)


if __name__ == "__main__":
    sys.exit(main())
