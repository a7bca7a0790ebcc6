// The pixels each graph track of a profile draws, read from its canvas in the Firefox
// Profiler web app (headless Chromium, as the web app's own shot.mjs opens it):
//   node track-pixels.mjs URL        # URL: the app's /from-url/... address of the profile
// Prints one line a track of the profile's thread: the count of pixels drawn, a tab, the
// track's name. Run from the directory that holds puppeteer-core (shot.sh's TOOLS_DIR).
import puppeteer from 'puppeteer-core';

const [url] = process.argv.slice(2);
if (!url) {
  console.error('usage: node track-pixels.mjs URL');
  process.exit(2);
}
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/lib/chromium/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--window-size=1600,1000'],
  defaultViewport: { width: 1600, height: 1000, deviceScaleFactor: 1 },
});
try {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30000 });
  await page.waitForSelector('.timelineTrackLocal', { timeout: 30000 });
  const tracks = await page.$$('.timelineTrackLocal');
  for (const track of tracks) {
    // A canvas draws only once in view.
    await track.evaluate((element) => element.scrollIntoView());
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [drawn, name] = await track.evaluate((element) => {
      const name = element.querySelector('.timelineTrackNameButton')?.textContent.trim();
      const canvas = element.querySelector('canvas');
      if (!canvas || !canvas.width || !canvas.height) return [0, name];
      const context = canvas.getContext('2d');
      const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
      let drawn = 0;
      for (let alpha = 3; alpha < pixels.length; alpha += 4) if (pixels[alpha] > 0) drawn++;
      return [drawn, name];
    });
    console.log(`${drawn}\t${name}`);
  }
} finally {
  await browser.close();
}
